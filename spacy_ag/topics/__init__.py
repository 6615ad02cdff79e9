"""The infinite-vocabulary topic model (InfVocLDA, Zhai & Boyd-Graber 2013) as an adaptor grammar trained online."""
from .topic_grammar import topic_grammar, topic_grammar_text
from .topic_model import TopicModel, default_topic_settings

__all__ = ["TopicModel", "default_topic_settings", "topic_grammar", "topic_grammar_text"]
