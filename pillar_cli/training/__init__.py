"""Linear-head DP-SGD engines and hyper-parameter sweeps on cached features."""
