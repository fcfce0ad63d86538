"""The NVRTC cache of modules compiled with name expressions (``qctoolchain.nvrtc_module``):
on the CPU against a fake ``cupy``, and on a GPU in two processes sharing one cache folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path

import pytest

import qctoolchain
from qctoolchain import (
    CompileFailed,
    NvrtcModule,
    nvrtc_cache_digest,
    nvrtc_cache_dir,
    nvrtc_cache_key,
    nvrtc_module,
)

CODE = "template <typename T> __global__ void scale(T* x, T a, int n) {}\n"
NAMES = ("scale<float>", "scale<double>")
OPTIONS = ("-std=c++17",)
ELF = b"\x7fELF"


def lowered_name(expr: str) -> str:
    return "_Z" + expr.replace("<", "I").replace(">", "E")


class FakeCompileException(Exception):
    pass


class FakeDriverError(Exception):
    pass


class FakeKernel:
    def __init__(self, name: str) -> None:
        self.name = name


def fake_cupy(arch: str = "90", cuda_path: str | None = None) -> types.ModuleType:
    """A ``cupy`` with what ``nvrtc_module`` uses: ``compile_using_nvrtc`` returns an "ELF"
    holding the lowered names, which ``RawModule(path=...)`` loads (as the driver would, it
    rejects a file that is not one) and ``get_function`` looks names up in."""
    cp = types.ModuleType("cupy")
    cp.__version__ = "14.0.0-fake"
    cp.calls = {"nvrtc": [], "raw_code": []}

    def compile_using_nvrtc(
        source, options=(), arch=None, filename="kern.cu", name_expressions=None, **_
    ):
        cp.calls["nvrtc"].append((source, tuple(options), arch, filename, name_expressions))
        if "#error" in source:
            raise FakeCompileException("kern.cu(1): error: #error directive")
        mapping = {n: lowered_name(n) for n in name_expressions}
        return ELF + json.dumps(sorted(mapping.values())).encode(), mapping

    class RawModule:
        def __init__(self, *, code=None, path=None, options=(), name_expressions=None):
            self.code, self.path, self.names = code, path, name_expressions
            self.functions: set[str] | None = None
            if code is not None:
                cp.calls["raw_code"].append((code, options, name_expressions))

        def compile(self):
            if self.code is not None:
                if "#error" in self.code:
                    raise FakeCompileException("kern.cu(1): error: #error directive")
                self.functions = {lowered_name(n) for n in self.names or ()}
                return
            data = Path(self.path).read_bytes()
            if not data.startswith(ELF):
                raise FakeDriverError("CUDA_ERROR_INVALID_IMAGE")
            try:
                self.functions = set(json.loads(data[len(ELF) :]))
            except ValueError as exc:
                raise FakeDriverError("CUDA_ERROR_INVALID_IMAGE") from exc

        def get_function(self, name):
            if self.functions is None:
                self.compile()
            if self.code is not None and self.names and name in self.names:
                name = lowered_name(name)  # RawModule maps its own name expressions
            if name not in self.functions:
                raise FakeDriverError(f"CUDA_ERROR_NOT_FOUND: {name}")
            return FakeKernel(name)

    class Device:
        compute_capability = arch

    cp.RawModule = RawModule
    cp.cuda = types.SimpleNamespace(
        Device=Device,
        get_cuda_path=lambda: cuda_path,
        nvrtc=types.SimpleNamespace(getVersion=lambda: (13, 0)),
        compiler=types.SimpleNamespace(
            compile_using_nvrtc=compile_using_nvrtc, CompileException=FakeCompileException
        ),
        driver=types.SimpleNamespace(CUDADriverError=FakeDriverError),
    )
    return cp


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder named by $QCTOOLCHAIN_NVRTC_CACHE and no warning remembered from
    another test."""
    folder = tmp_path / "nvrtc"
    monkeypatch.setenv("QCTOOLCHAIN_NVRTC_CACHE", str(folder))
    monkeypatch.setattr(qctoolchain, "_warned_folders", set())
    return folder


def use(monkeypatch, cp: types.ModuleType) -> types.ModuleType:
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


def entry(folder: Path) -> tuple[Path, Path]:
    (record,) = folder.glob("*.json")
    return record, record.with_suffix(".cubin")


def test_first_call_compiles_and_writes_the_entry(cache, monkeypatch):
    cp = use(monkeypatch, fake_cupy())
    mod = nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=list(NAMES))
    assert isinstance(mod, NvrtcModule) and not mod.from_cache
    ((_, options, arch, filename, names),) = cp.calls["nvrtc"]
    # the architecture is CuPy's choice (as RawModule's); -ftz=true as RawModule adds it
    assert arch is None and filename == "scale.cu" and names == NAMES
    assert options == (*OPTIONS, "-ftz=true")
    record_path, binary = entry(cache)
    record = json.loads(record_path.read_text())
    assert record["kind"] == "cubin" and binary.read_bytes().startswith(ELF)
    assert record["lowered"] == {n: lowered_name(n) for n in NAMES}
    assert record["key"]["name_expressions"] == list(NAMES)
    assert record["key"]["arch"] == "90" and record["key"]["nvrtc_version"] == [13, 0]
    assert record_path.stem == nvrtc_cache_digest(record["key"]) == binary.stem
    assert not list(cache.glob("*.tmp"))


def test_nvrtc_sees_the_cuda_headers_rawmodule_would(cache, tmp_path, monkeypatch):
    (tmp_path / "cuda" / "include").mkdir(parents=True)
    cp = use(monkeypatch, fake_cupy(cuda_path=str(tmp_path / "cuda")))
    nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    ((_, options, *_),) = cp.calls["nvrtc"]
    assert options == (*OPTIONS, f"-I{tmp_path / 'cuda' / 'include'}", "-ftz=true")


def test_second_process_loads_from_disk_without_compiling(cache, monkeypatch):
    use(monkeypatch, fake_cupy())
    nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    cp = use(monkeypatch, fake_cupy())  # a fresh process: nothing compiled in it yet
    mod = nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    assert mod.from_cache and not cp.calls["nvrtc"] and not cp.calls["raw_code"]
    assert mod.get_function("scale<double>").name == lowered_name("scale<double>")


def test_get_function_maps_name_expressions_to_lowered_names(cache, monkeypatch):
    use(monkeypatch, fake_cupy())
    for _ in range(2):  # compiled, then from the cache
        mod = nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
        assert mod.lowered == {n: lowered_name(n) for n in NAMES}
        for name in NAMES:
            assert mod.get_function(name).name == lowered_name(name)
        with pytest.raises(FakeDriverError):
            mod.get_function("scale<int>")


def test_key_separates_source_options_names_arch_and_versions():
    base = dict(
        code=CODE, options=OPTIONS, name_expressions=NAMES, arch="90",
        nvrtc_version=(13, 0), cupy_version="14.0.0",
    )  # fmt: skip
    digest = nvrtc_cache_digest(nvrtc_cache_key(**base))
    changes = [
        {"code": CODE + "// edited\n"},
        {"options": (*OPTIONS, "-DX=1")},
        {"name_expressions": NAMES[:1]},
        {"name_expressions": NAMES[::-1]},
        {"arch": "80"},
        {"nvrtc_version": (12, 8)},
        {"cupy_version": "14.1.0"},
    ]
    digests = {nvrtc_cache_digest(nvrtc_cache_key(**{**base, **c})) for c in changes}
    assert digest not in digests and len(digests) == len(changes)
    assert nvrtc_cache_digest(nvrtc_cache_key(**base)) == digest


@pytest.mark.parametrize(
    "change",
    [
        {"code": CODE + "// edited\n"},
        {"options": (*OPTIONS, "-DX=1")},
        {"name_expressions": NAMES[:1]},
        {"arch": "80"},
    ],
)
def test_a_changed_input_is_compiled_into_its_own_entry(cache, monkeypatch, change):
    use(monkeypatch, fake_cupy())
    nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    cp = use(monkeypatch, fake_cupy(arch=change.get("arch", "90")))
    mod = nvrtc_module(
        change.get("code", CODE), "scale.cu", options=change.get("options", OPTIONS),
        name_expressions=change.get("name_expressions", NAMES),
    )  # fmt: skip
    assert not mod.from_cache and len(cp.calls["nvrtc"]) == 1
    assert len(list(cache.glob("*.json"))) == 2


@pytest.mark.parametrize(
    "damage",
    ["json-garbage", "json-truncated", "json-other-key", "binary-garbage", "binary-flipped",
     "binary-missing"],
)  # fmt: skip
def test_a_damaged_entry_is_compiled_and_written_again(cache, monkeypatch, damage):
    use(monkeypatch, fake_cupy())
    nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    record, binary = entry(cache)
    if damage == "json-garbage":
        record.write_bytes(b"\xff\x00 not json")
    elif damage == "json-truncated":
        record.write_text(record.read_text()[:40])
    elif damage == "json-other-key":
        data = json.loads(record.read_text())
        data["key"]["name_expressions"] = ["scale<int>"]
        record.write_text(json.dumps(data))
    elif damage == "binary-garbage":
        binary.write_bytes(b"not a cubin")
    elif damage == "binary-flipped":  # still loads, but is not the binary recorded
        binary.write_bytes(binary.read_bytes().replace(b"float", b"flaot"))
    else:
        binary.unlink()
    cp = use(monkeypatch, fake_cupy())
    mod = nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    assert not mod.from_cache and len(cp.calls["nvrtc"]) == 1
    assert mod.get_function("scale<float>").name == lowered_name("scale<float>")
    cp = use(monkeypatch, fake_cupy())  # rewritten: the next process reads it
    assert nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES).from_cache
    assert not cp.calls["nvrtc"]


def test_an_unwritable_folder_still_gives_a_working_module(cache, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("QCTOOLCHAIN_NVRTC_CACHE", str(blocker / "nvrtc"))
    cp = use(monkeypatch, fake_cupy())
    with pytest.warns(UserWarning, match="cannot be written"):
        mod = nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    assert not mod.from_cache and len(cp.calls["raw_code"]) == 1  # compiled once
    assert mod.get_function("scale<double>").name == lowered_name("scale<double>")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        mod = nvrtc_module(CODE, "scale.cu", options=OPTIONS, name_expressions=NAMES)
    assert mod.get_function("scale<float>").name == lowered_name("scale<float>")


def test_compile_errors_name_what_they_compiled(cache, monkeypatch):
    use(monkeypatch, fake_cupy())
    with pytest.raises(CompileFailed, match="broken.cu: NVRTC could not compile it"):
        nvrtc_module("#error no\n" + CODE, "broken.cu", name_expressions=NAMES)
    with pytest.raises(CompileFailed, match="broken.cu: NVRTC could not compile it"):
        nvrtc_module("#error no\n" + CODE, "broken.cu")
    assert not list(cache.glob("*.json"))


def test_without_name_expressions_cupy_compiles_and_nothing_is_written(cache, monkeypatch):
    cp = use(monkeypatch, fake_cupy())
    mod = nvrtc_module("__global__ void k() {}", "k.cu", options=OPTIONS)
    assert isinstance(mod, cp.RawModule) and cp.calls["raw_code"] and not cp.calls["nvrtc"]
    assert not cache.exists()


def test_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("QCTOOLCHAIN_NVRTC_CACHE", str(tmp_path / "mine"))
    assert nvrtc_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("QCTOOLCHAIN_NVRTC_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nvrtc_cache_dir() == tmp_path / "xdg" / "qctoolchain" / "nvrtc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert nvrtc_cache_dir() == Path.home() / ".cache" / "qctoolchain" / "nvrtc"


GPU_SCRIPT = textwrap.dedent(
    """
    import json
    import cupy
    import qctoolchain

    code = '''
    template <typename T>
    __global__ void axpb(T* x, T a, T b, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = a * x[i] + b;
    }
    '''
    names = ["axpb<float>", "axpb<double>"]
    mod = qctoolchain.nvrtc_module(code, "axpb.cu", name_expressions=names)
    ok = True
    for name, dtype in zip(names, (cupy.float32, cupy.float64)):
        x = cupy.arange(1000, dtype=dtype)
        mod.get_function(name)((4,), (256,), (x, dtype(2), dtype(1), cupy.int32(1000)))
        ok = ok and bool((x == 2 * cupy.arange(1000, dtype=dtype) + 1).all())
    print(json.dumps({"from_cache": mod.from_cache, "ok": ok}))
    """
)


@pytest.mark.gpu
def test_a_second_process_reads_the_cache_and_its_kernels_run(tmp_path):
    src = Path(__file__).resolve().parents[2] / "src"
    env = dict(os.environ, QCTOOLCHAIN_NVRTC_CACHE=str(tmp_path / "nvrtc"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", GPU_SCRIPT], env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs == [{"from_cache": False, "ok": True}, {"from_cache": True, "ok": True}]
    assert len(list((tmp_path / "nvrtc").glob("*.json"))) == 1
