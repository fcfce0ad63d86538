"""Shared pieces of the two engines' pipelines: molecules, provenance, tables."""
