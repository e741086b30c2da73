"""The docs site: Sphinx with MyST (Markdown pages), built by `make docs` and by `make test`
with warnings as errors, so a broken link, a page outside every table of contents or a missing
screenshot fails the build."""

project = "Omnium"
author = "Omnium"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
# The pages only; the build's own output and the generated schema are not pages.
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links to a heading
html_theme = "alabaster"
html_title = "Omnium"
html_show_sourcelink = False
