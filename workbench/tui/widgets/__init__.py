"""The TUI's widgets.

- `cell_list.py`: the virtualized list of compact cells (Line API) under the conversation
  and Jupyter panes; `cell_render.py` draws a cell's body, `cell_editor.py` opens it in $EDITOR.
- `conversation.py`, `shell.py` (+ `output_view.py`), `jupyter.py`, `browser.py`: the panes.
- `status.py`, `prompt.py`, `confirm.py`: status bar, input box, confirmation panel.
"""
