"""The example knowledge base, shipped inside the package for `slayer-kb init DIR --example`."""
