"""spacy-ag: adaptor grammars (Johnson, Griffiths & Goldwater 2006) for spaCy."""

__version__ = "0.1.0"
