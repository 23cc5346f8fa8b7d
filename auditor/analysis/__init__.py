"""Where a tie stands, as opposed to what it is: the context analysis every finding goes through.

- `guards`: what an `if` test, a skip decorator or an early return says about the platforms the
  code under it can run on (three-valued: true, false or unknown per platform);
- `placement`: the contexts of one reported node, from its enclosing nodes (collected while the
  findings are placed, in the one code-generation pass that already computes their positions);
- `project`: what the project around a file says (its own packages, the CUDA extensions it
  builds, backend modules beside their siblings, test-only paths), computed once per scan;
- `apply`: how the contexts change a finding's effects, severity, message and suggestion, with
  the vocabulary, messages and guard names in rules/contexts.toml;
- after the files, across them: `crossfile` (CUDA sources a project's build script compiles) and
  `alternatives` (targets the repository's other Dockerfiles serve), with `images` (which
  container images are NVIDIA-only and which targets an image or a Dockerfile's name serves,
  from rules/images.toml; the container rules use it too).

Stage 5 of the pipeline (after the rules, before the score): nothing here imports rule code.
"""
