"""The root drives, the other ranks serve: every distributed build starts with the root's
broadcast of a request header, which a serving rank reads in ``serve`` and follows with its
part of the build, until the root's ``stop``."""

from __future__ import annotations

from .comm import Context, DistError


class Service:
    """Requests of the root to the ranks: ``jk`` (a ``DistributedJK``) and ``xc`` (a
    distributed NumInt), either of them None where the calculation needs none."""

    def __init__(self, ctx: Context, jk=None, xc=None) -> None:
        self.ctx, self.jk, self.xc = ctx, jk, xc

    def serve(self) -> int:
        """Follow the root's requests until it stops; the number of builds served."""
        if self.ctx.root:
            raise DistError("the root drives the calculation; serve() is for the other ranks")
        served = 0
        while True:
            header = self.ctx.comm.bcast(None, root=0)
            if header[0] == "stop":
                return served
            target = {"jk": self.jk, "xc": self.xc}.get(header[0])
            if target is None:
                raise DistError(f"a {header[0]!r} request with no engine to serve it")
            target.follow(header)
            served += 1

    def stop(self) -> None:
        """Root: release the serving ranks."""
        if self.ctx.root:
            self.ctx.comm.bcast(("stop",), root=0)

    def free(self) -> None:
        for engine in (self.jk, self.xc):
            if engine is not None:
                engine.free()
