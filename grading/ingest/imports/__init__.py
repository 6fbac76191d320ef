"""Imports of agent runs and uploads, through the one ingest path (grading.ingest.service).

runs (`import_runs`: PATHs read into group lines), uploads (an upload stored, then unpacked
under the disk quota), jobs (an upload's job: created, queued, run), orphans (the sweep of
upload folders no job owns). Import the module that holds a name: nothing is re-exported here.
"""
