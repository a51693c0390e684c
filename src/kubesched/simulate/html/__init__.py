"""The HTML report (`--output html`): one self-contained file with charts and every pod's explanation."""

from kubesched.simulate.html.page import compare_html, replay_html, snapshot_html

__all__ = ["compare_html", "replay_html", "snapshot_html"]
