"""The columnar pipeline (``pipeline: columnar``): Arrow batches of V$LOGMNR_CONTENTS, SQL_REDO to JSON in one native pass, big transactions spilled as Arrow IPC."""
