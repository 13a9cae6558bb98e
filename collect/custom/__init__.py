"""Your own model and training loop: the sigma_w probe for any ``torch.nn.Module`` (``probe``), a recorder for any
training loop (``recorder``, with a PyTorch Lightning callback in ``lightning``), and grids whose pipelines are the
user's code (docs/own-model.md)."""
