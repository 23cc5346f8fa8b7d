"""The migration plan (`audit plan PATH --target T`): the steps a careful team takes to move to
one target, per component, or (without --target) which target to try first. command.py runs it
(scan, signals.py, then build.py: the plan or the ranking as the JSON contract), markdown.py and
page.py (what the HTML page gets) render it, effort.py sizes each item, catalogue.py reads
rules/plan/*.toml. Steps 5 and 6 are the files that `--write-tests DIR` generates (below).
Nothing here imports or runs the scanned project, or a vendor package: the generated files do
that themselves, when the team runs them.

    from auditor.plan.write import write_tests, WriteRefused
    paths = write_tests("DIR", "tpu", project="demo", entry="mypkg.models:parity_case")
    # -> [DIR/test_parity_tpu.py, DIR/bench_tpu.py]

    from auditor.plan.parity import render_parity_test, parity_filename
    from auditor.plan.benchmark import render_benchmark, benchmark_filename
    text = render_parity_test("tpu", project="demo", entry=None)   # the stand-in model

Every function takes the same keywords:
    project    the project's name, for the header comment (untrusted text: made plain there)
    entry      "module:function" or None. The function takes no required arguments (it may take
               batch_size and seq_len) and returns (model, inputs); None runs a tiny stand-in
               model. Only its spelling is checked here: ValueError when it is not module:function
    device     the target's device: a `devices.TargetDevice`, a torch device string ("tpu",
               "cuda:1"), or None to take it from `devices`
    reference  the device the outputs are compared with and the speed measured against:
               "cuda" (NVIDIA's build, the default) or a `TargetDevice`
    devices    target name -> `TargetDevice` (device string, label, backend modules to import
               when probing, torch build to require); None: the target registry's
               (`devices.registry_devices()`, from rules/targets.toml)

`write_tests` raises `write.WriteRefused` (writing nothing; `.path`, `.reason`, and a message
fit for one line of an exit-2 error) when DIR or a file is a symbolic link, or a file exists
that audit did not write or that was edited since: the header's checksum tells. Rendering is
deterministic, so regenerating an unedited file changes nothing.

The generated files import only torch, pytest (the test) and the standard library, pass
`ruff check` and `ruff format --check` at ruff's defaults, and read these environment
variables when they run: LOCKIN_PARITY_REFERENCE, LOCKIN_PARITY_TARGET (a device string each:
e.g. both cpu to try them on a CPU-only machine), LOCKIN_PARITY_ENTRY, LOCKIN_PARITY_DTYPE and
LOCKIN_PARITY_OUTPUTS (the parity test: reference outputs saved on one machine, compared on
another). Their templates are `templates/*.py.tmpl`, shipped in the wheel."""
