// netpol-verdicts answers, for each flow it is asked about, whether the NetworkPolicies it is
// given let that flow through, and which policies decided it. The verdicts are cyclonus's
// (github.com/mattfenwick/cyclonus/pkg/matcher, the engine behind `cyclonus analyze --mode
// query-traffic`): this program only reads the question as JSON and writes the answer as JSON,
// which cyclonus's CLI prints only as tables.
//
// stdin:  {"policies": [networking.k8s.io/v1 NetworkPolicy, ...],
//          "flows": [cyclonus matcher.Traffic: {"Source": {"Internal": {"Namespace", "NamespaceLabels",
//                    "PodLabels"}} or {"IP": ...}, "Destination": ..., "ResolvedPort", "ResolvedPortName", "Protocol"}]}
// stdout: [{"allowed": bool, "ingress": {"allowed", "allowedBy", "deniedBy"}, "egress": {...}}], one per flow
//         (allowedBy/deniedBy: namespace/name of the policies selecting the pod that allow / do not allow it).
// Bad input: one line on stderr, exit 2.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	networkingv1 "k8s.io/api/networking/v1"
)

type request struct {
	Policies []*networkingv1.NetworkPolicy `json:"policies"`
	Flows    []*matcher.Traffic            `json:"flows"`
}

type direction struct {
	Allowed   bool     `json:"allowed"`
	AllowedBy []string `json:"allowedBy"`
	DeniedBy  []string `json:"deniedBy"`
}

type verdict struct {
	Allowed bool      `json:"allowed"`
	Ingress direction `json:"ingress"`
	Egress  direction `json:"egress"`
}

func names(targets []*matcher.Target) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, t := range targets {
		for _, p := range t.SourceRules {
			name := p.Namespace + "/" + p.Name
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

func answer(d *matcher.DirectionResult) direction {
	return direction{Allowed: d.IsAllowed(), AllowedBy: names(d.AllowingTargets), DeniedBy: names(d.DenyingTargets)}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "netpol-verdicts: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	defer func() {
		if r := recover(); r != nil { // cyclonus panics on a policy the API server would refuse
			fail("%v", r)
		}
	}()
	var req request
	decoder := json.NewDecoder(os.Stdin)
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&req); err != nil {
		fail("the request on stdin is not {\"policies\": [...], \"flows\": [...]}: %v", err)
	}
	for i, f := range req.Flows {
		if f == nil || f.Source == nil || f.Destination == nil {
			fail("flow %d: needs a Source and a Destination", i)
		}
	}
	// Not simplified: the verdicts are the same, and each policy keeps its own name.
	policies := matcher.BuildNetworkPolicies(false, req.Policies)
	out := make([]verdict, len(req.Flows))
	for i, flow := range req.Flows {
		result := policies.IsTrafficAllowed(flow)
		out[i] = verdict{Allowed: result.IsAllowed(), Ingress: answer(result.Ingress), Egress: answer(result.Egress)}
	}
	encoder := json.NewEncoder(os.Stdout)
	if err := encoder.Encode(out); err != nil {
		fail("%v", err)
	}
}
