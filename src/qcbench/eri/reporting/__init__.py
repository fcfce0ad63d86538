"""Tables, figures and summaries that the pipeline publishes about the ERI engine.

``graph_tables`` turns orchestrated classes into rows, ``graph_figures`` and ``graph_summary``
render them, ``verification`` runs and tabulates the comparison with PySCF. The pipeline's
scripts only read configuration and write files; the logic lives here.
"""
