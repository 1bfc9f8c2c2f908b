"""What the agent learned: the run report (``wanderlust report``), TensorBoard images, the live view.

Modules (import them directly; this package imports nothing, so the trainer can use ``tb_images``
without loading matplotlib or the report code):

- ``data``: pure numpy: curve groups from ``metrics.jsonl``, visit counts, novelty ranking, frame strips;
- ``record``: replay a run: load agent + novelty module, record episodes, score their frames;
- ``plots``: matplotlib figures and the episode GIF, as bytes;
- ``html``: the self-contained page;
- ``build``: :func:`wanderlust.report.build.write_report`, the ``report`` command;
- ``tb_images``: :func:`wanderlust.report.tb_images.log_run_images`, image summaries while training;
- ``live``: the ``play --show`` web page on 127.0.0.1.
"""
