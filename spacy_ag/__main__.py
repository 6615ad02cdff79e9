"""`python -m spacy_ag ...`: the same command line as `spacy-ag`."""
from .cli import app

if __name__ == "__main__":
    app(prog_name="spacy-ag")
