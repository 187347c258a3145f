package kube

import (
	"fmt"
	"sort"

	"github.com/mythex/mythex/internal/nativecfg"
)

// Read decodes every file (name → contents) as Kubernetes manifests and
// returns one Subject per workload, joined to the Services whose selector
// matches its pod labels and to the Ingresses and TargetGroupBindings that
// route to those Services. It also returns how many documents were of kinds
// it does not judge (ConfigMaps, ...). Files are read together because a
// workload's load balancer is usually in another file.
func Read(files map[string][]byte) ([]*nativecfg.Subject, int, error) {
	var objs []object
	ignored := 0
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		got, ign, err := decode(f, files[f])
		if err != nil {
			return nil, 0, err
		}
		objs, ignored = append(objs, got...), ignored+ign
	}
	idx := index(objs)
	var out []*nativecfg.Subject
	for i := range objs {
		o := &objs[i]
		if o.workload == nil {
			continue
		}
		s, err := translate(o, idx.routesTo(o))
		if err != nil {
			return nil, 0, err
		}
		out = append(out, s)
	}
	return out, ignored, nil
}

// Sniff reports whether data looks like a Kubernetes manifest: a document
// with apiVersion and kind at the top level.
func Sniff(data []byte) bool {
	docs, _ := splitDocs(data)
	for _, d := range docs {
		if hasTopKey(d, "apiVersion") && hasTopKey(d, "kind") {
			return true
		}
	}
	return false
}

func hasTopKey(doc []byte, key string) bool {
	for _, l := range splitLines(doc) {
		if len(l) > len(key) && string(l[:len(key)]) == key && (l[len(key)] == ':' || l[len(key)] == ' ') {
			return true
		}
		if len(l) > len(key)+2 && l[0] == '"' && string(l[1:1+len(key)]) == key {
			return true
		}
	}
	return false
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}

// objIndex finds what routes to a workload.
type objIndex struct {
	services  []*object
	ingresses []*object
	tgbs      []*object
}

func index(objs []object) objIndex {
	var ix objIndex
	for i := range objs {
		o := &objs[i]
		switch {
		case o.service != nil:
			ix.services = append(ix.services, o)
		case o.ingress != nil:
			ix.ingresses = append(ix.ingresses, o)
		case o.tgb != nil:
			ix.tgbs = append(ix.tgbs, o)
		}
	}
	return ix
}

// route is what sits in front of one workload.
type route struct {
	service *object // nil: no Service selects the pods
	ingress *object // an Ingress routing to the Service
	tgb     *object // a TargetGroupBinding of the Service
}

// routesTo finds the Service selecting w's pods (the first, by file order)
// and what routes to it, preferring an ALB.
func (ix objIndex) routesTo(w *object) route {
	labels := w.workload.template.Labels
	var r route
	for _, s := range ix.services {
		sel := s.service.Spec.Selector
		if s.meta.Namespace != w.meta.Namespace || len(sel) == 0 {
			continue
		}
		match := true
		for k, v := range sel {
			if labels[k] != v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		cand := route{service: s}
		for _, in := range ix.ingresses {
			if in.meta.Namespace == s.meta.Namespace && ingressRoutesTo(in, s.meta.Name) {
				if cand.ingress == nil || (lbOf(cand.ingress) != albLB && lbOf(in) == albLB) {
					cand.ingress = in
				}
			}
		}
		for _, t := range ix.tgbs {
			if t.meta.Namespace == s.meta.Namespace && t.tgb.Spec.ServiceRef.Name == s.meta.Name {
				cand.tgb = t
			}
		}
		if r.service == nil || (r.ingress == nil && r.tgb == nil && (cand.ingress != nil || cand.tgb != nil)) {
			r = cand
		}
	}
	return r
}

func ingressRoutesTo(in *object, svc string) bool {
	spec := in.ingress.Spec
	if spec.DefaultBackend != nil && spec.DefaultBackend.Service != nil && spec.DefaultBackend.Service.Name == svc {
		return true
	}
	for _, rule := range spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			if p.Backend.Service != nil && p.Backend.Service.Name == svc {
				return true
			}
		}
	}
	return false
}

func name(o *object) string { return fmt.Sprintf("%s %s/%s", o.kind, o.meta.Namespace, o.meta.Name) }
