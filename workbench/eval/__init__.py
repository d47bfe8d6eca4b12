"""Evaluation: datasets of tasks run as trials in fresh sandboxes, scored by verifiers"""
