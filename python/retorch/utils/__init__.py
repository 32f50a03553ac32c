"""retorch.utils: helpers shaped like torch.utils (tensorboard, ...)."""
