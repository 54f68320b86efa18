"""Sphinx configuration of the rbfly documentation."""

project = 'rbfly'
author = 'rbfly developers'
extensions = ['sphinx.ext.autodoc', 'sphinx.ext.intersphinx']
autodoc_member_order = 'bysource'
autodoc_typehints = 'description'
html_theme = 'alabaster'
exclude_patterns = ['_build']
