"""The HTML report's toolkit (`--output html`): one self-contained page, and the figure layout every
command's charts share. Each command builds its own page: `snapshot.html`, `replay.html`, `compare.html`."""

from kubesched.simulate.html.figures import Figure, chart_layout, new_figure
from kubesched.simulate.html.page import render_page

__all__ = ["Figure", "chart_layout", "new_figure", "render_page"]
