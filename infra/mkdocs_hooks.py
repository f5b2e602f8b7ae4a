"""mkdocs hooks: publish the repository files the docs link to, so links stay checked.

The pages in docs/ link to results files (`../benchmarks/results/x.md`) and to code by their
paths in the repository, which is how they read on GitHub. mkdocs only knows files under
docs/, so a strict build would call those links broken. These hooks

- add `benchmarks/` (its markdown and images) to the site under `benchmarks/`, outside the
  nav, and any other repository file a page links to under its own path;
- rewrite each link that leaves docs/ to the published file's place in the site.

A link to a file that exists nowhere is left as it is, and the strict build fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

REPO = Path(__file__).resolve().parents[1]
DOCS = "docs"
PUBLISHED_TREES = ("benchmarks",)
PUBLISHED_SUFFIXES = (".md", ".png", ".svg")
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def _repo_target(page_src_uri: str, url: str) -> str | None:
    """The repository path a relative link in a docs page (or a published file) points at,
    or None for external links, anchors and absolute paths."""
    if "://" in url or url.startswith(("/", "mailto:")):
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_src_uri), url))


def _page_repo_path(file: File) -> str:
    """Where a site file lives in the repository: a published one under its own path, a
    docs page under docs/."""
    return file.src_uri if file.generated_by else f"{DOCS}/{file.src_uri}"


def _site_path(repo_path: str) -> str:
    """Where a repository file is published in the site."""
    prefix = f"{DOCS}/"
    return repo_path[len(prefix) :] if repo_path.startswith(prefix) else repo_path


def _publish(files: Files, config: Any, repo_path: str) -> None:
    if files.get_file_from_path(repo_path) is not None or not (REPO / repo_path).is_file():
        return
    file = File.generated(
        config, repo_path, abs_src_path=str(REPO / repo_path), inclusion=InclusionLevel.NOT_IN_NAV
    )
    files.append(file)


def on_files(files: Files, config: Any) -> Files:
    """Add the benchmarks tree and every outside file a docs page links to."""
    for tree in PUBLISHED_TREES:
        for path in sorted((REPO / tree).rglob("*")):
            if path.suffix in PUBLISHED_SUFFIXES and path.is_file():
                _publish(files, config, path.relative_to(REPO).as_posix())
    for page in sorted((REPO / DOCS).rglob("*.md")):
        src = page.relative_to(REPO).as_posix()
        for match in LINK.finditer(page.read_text(encoding="utf-8")):
            target = _repo_target(src, match.group(2))
            if target and not target.startswith((f"{DOCS}/", "..")):
                _publish(files, config, target)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point each link that leaves docs/ at the published copy of its target."""
    src_uri = page.file.src_uri
    here = _page_repo_path(page.file)

    def rewrite(match: re.Match[str]) -> str:
        target = _repo_target(here, match.group(2))
        if target is None or target.startswith(".."):
            return match.group(0)
        site = _site_path(target)
        if files.get_file_from_path(site) is None:
            return match.group(0)
        url = posixpath.relpath(site, posixpath.dirname(src_uri) or ".")
        return f"{match.group(1)}{url}{match.group(3) or ''}{match.group(4)}"

    return LINK.sub(rewrite, markdown)
