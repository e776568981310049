"""Placeholder: filled by its helper."""
