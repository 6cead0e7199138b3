"""Recall: hybrid search over claims, chunks and node cards, and the prompt contract it renders into."""
