"""Programs that run inside a pod, standard library only, each shipped whole in a ConfigMap by the
component that runs it: the node gate, a tested node's release and the root Application's PreSync check.
They import nothing from forge: each file is the program."""
