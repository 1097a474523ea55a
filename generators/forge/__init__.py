"""forge: hardware inventory in, validated per-cluster GitOps overlays out."""
