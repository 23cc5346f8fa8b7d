"""What a warm run reuses besides the per-file results, kept in the cache's `meta`: the discovered
file list (with the folder stamps it depends on: a warm run over a large tree then stats its
folders instead of listing them) and the project facts each file's cache key depends on
(auditor.analysis.project)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from auditor.analysis.project import ProjectInfo
from auditor.discover.files import Discovery, SourceFile, tree_unchanged

if TYPE_CHECKING:
    from auditor.cache.results import Cache
    from auditor.config.settings import Settings


def discovery(paths: list[str], root: str, options: Settings, cache: Cache | None) -> Discovery:
    """Discovery, reused from the cache when no folder it listed (nor ignore file it read) changed:
    a warm run over a large tree then stats its folders instead of listing them."""
    if cache is None or len(paths) != 1 or not os.path.isdir(paths[0]):  # files are cheap to find
        # the walk's modules load only where a walk runs: a warm run over an unchanged tree has none
        from auditor.discover.walk import discover

        return discover(paths, root, options.respect_gitignore, options.excludes, force_exclude=options.force_exclude)
    key = [os.path.abspath(paths[0]), root, options.respect_gitignore, list(options.excludes)]
    saved = cache.meta.get("tree")
    try:
        if isinstance(saved, dict) and saved.get("key") == key and tree_unchanged(saved["stamps"]):
            return Discovery(files=[SourceFile(path, display, kind) for path, display, kind in saved["files"]])
    except (KeyError, TypeError, ValueError):  # not what this version writes: walk again
        pass
    from auditor.discover.walk import discover  # the tree changed: walk it again

    found = discover(paths, root, options.respect_gitignore, options.excludes, stamp=True)
    # A folder changed within the mtime granularity of now could change again unseen ("racy git").
    if found.stamps is not None and all(cache.settled(mtime) for _, _, mtime in found.stamps):
        cache.meta["tree"] = {"key": key, "stamps": found.stamps,
                              "files": [[f.path, f.display, f.kind] for f in found.files]}
        cache.dirty = True
    elif saved is not None:
        cache.meta.pop("tree", None)
        cache.dirty = True
    return found


def project_info(paths: list[str], root: str, found: Discovery, cache: Cache | None) -> ProjectInfo:
    """What the project says about each file (auditor.analysis.project). With the cached file list
    (whose folder stamps vouch for every listing) and unchanged project files, the per-folder
    cache keys of the last run are reused instead of recomputed."""
    walked = all(os.path.isdir(p) for p in paths)  # a directory walk lists every folder it reports
    project = ProjectInfo(root, [f.path for f in found.files] if walked else None)
    tree = cache.meta.get("tree") if cache is not None else None
    if not walked or not isinstance(tree, dict):
        return project
    saved = cache.meta.get("facts")  # type: ignore[union-attr]
    if isinstance(saved, dict) and saved.get("key") == tree.get("key") and project.preset(saved):
        return project
    for source in found.files:  # the scan asks for every key anyway
        project.key(source.path, source.display)
    cache.meta["facts"] = {"key": tree.get("key"), **project.export()}  # type: ignore[union-attr]
    cache.dirty = True  # type: ignore[union-attr]
    return project
