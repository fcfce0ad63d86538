# The index of records and reports, generated from the records' manifests, and `publish`: the
# one rule that writes tracked files. A plain run computes into results/ (ignored) only;
# `snakemake publish` copies what `all` made into reports/ with a MANIFEST.json (commit,
# machine, versions, command, files, records). Included last: it lists every published file.
import os
import shlex

INDEX = published("INDEX.md")


rule records_index:
    """INDEX.md: every record (newest first per kind, superseded ones marked) and every report."""
    input:
        tracked_records(*KINDS),
    output:
        report(f"{RESULTS}/INDEX.md", caption="../report/records_index.rst", category="Records"),
    params:
        reports=" ".join(p for p in PUBLISHED if p != "INDEX.md"),
        # the records as seen from the published index (reports/INDEX.md)
        link=os.path.relpath(RECORDS, REPORTS),
    log:
        f"{RESULTS}/logs/records/index.log",
    shell:
        "{PY} -m qcbench.records index --root {RECORDS} --reports {params.reports}"
        " --link {params.link} --out {output} > {log} 2>&1"


rule publish:
    """Copy the reports of `all` into reports/ with MANIFEST.json beside them."""
    input:
        [f"{RESULTS}/{path}" for path in PUBLISHED],
    output:
        f"{REPORTS}/MANIFEST.json",
    params:
        files=" ".join(PUBLISHED),
        roots=" ".join(RECORD_ROOTS),
        command=shlex.join(["snakemake", *sys.argv[1:]]),
    localrule: True
    log:
        f"{RESULTS}/logs/publish.log",
    shell:
        "{PY} -m qcbench.publish --results {RESULTS} --reports {REPORTS} --files {params.files}"
        " --records {params.roots} --command {params.command:q} > {log} 2>&1"
