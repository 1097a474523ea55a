"""The model stage: the derived, typed model of one cluster, its capacity per GPU pool, the queue
arithmetic, the Secrets its workloads read and the facts of day two (upgrade labels, node tests). Computed once from the inventory; emitters only read it."""
