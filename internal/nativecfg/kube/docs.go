// Package kube reads Kubernetes manifests — Deployments, StatefulSets,
// DaemonSets, Services, Ingresses and the AWS Load Balancer Controller's
// TargetGroupBindings, in multi-document YAML or a List — with the Kubernetes
// API types, and translates each workload's pod template into the timing
// model of package timing (see Read).
package kube

import (
	"bytes"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mythex/mythex/internal/nativecfg"
)

// object is one decoded manifest with where it came from.
type object struct {
	file string
	src  *nativecfg.Source
	kind string
	meta metav1.ObjectMeta
	// Exactly one of these is set, by kind.
	workload *workload
	service  *corev1.Service
	ingress  *netv1.Ingress
	tgb      *targetGroupBinding
}

// workload is the part of a Deployment, StatefulSet or DaemonSet that decides
// its pods' termination.
type workload struct {
	template corev1.PodTemplateSpec
}

// targetGroupBinding is the AWS Load Balancer Controller's
// elbv2.k8s.aws/v1beta1 TargetGroupBinding: the fields this reader uses.
type targetGroupBinding struct {
	Spec struct {
		TargetGroupARN string `json:"targetGroupARN"`
		TargetType     string `json:"targetType"`
		ServiceRef     struct {
			Name string `json:"name"`
		} `json:"serviceRef"`
	} `json:"spec"`
}

// splitDocs splits a YAML stream on "---" lines, returning each document with
// the line it starts on.
func splitDocs(data []byte) (docs [][]byte, lines []int) {
	start, startLine, line := 0, 1, 1
	for i := 0; i <= len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		next := len(data) + 1
		if end >= 0 {
			next = i + end + 1
		}
		l := data[i:min(next-1, len(data))]
		if bytes.HasPrefix(l, []byte("---")) && len(bytes.TrimSpace(l[3:])) == 0 || bytes.Equal(bytes.TrimSpace(l), []byte("...")) {
			docs, lines = append(docs, data[start:i]), append(lines, startLine)
			start, startLine = min(next, len(data)), line+1
		}
		i = next
		line++
	}
	docs, lines = append(docs, data[start:]), append(lines, startLine)
	return docs, lines
}

// decode reads every object of one file. Documents of kinds this reader does
// not judge are counted in ignored; a document that is not a Kubernetes
// object at all is an error.
func decode(file string, data []byte) (objs []object, ignored int, err error) {
	docs, lines := splitDocs(data)
	for i, doc := range docs {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", file, lines[i], err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue // only comments
		}
		src := nativecfg.NewSource(doc, lines[i])
		got, ign, err := decodeJSON(file, lines[i], src, js)
		if err != nil {
			return nil, 0, err
		}
		objs, ignored = append(objs, got...), ignored+ign
	}
	return objs, ignored, nil
}

func decodeJSON(file string, line int, src *nativecfg.Source, js []byte) ([]object, int, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil || tm.Kind == "" || tm.APIVersion == "" {
		return nil, 0, fmt.Errorf("%s:%d: not a Kubernetes object: apiVersion and kind are required", file, line)
	}
	o := object{file: file, src: src, kind: tm.Kind}
	var err error
	switch tm.Kind {
	case "List":
		// kubectl get -o yaml prints a List; positions inside its items are
		// not tracked, only the file.
		var l struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &l); err != nil {
			return nil, 0, fmt.Errorf("%s:%d: List: %w", file, line, err)
		}
		var out []object
		ignored := 0
		for _, it := range l.Items {
			got, ign, err := decodeJSON(file, line, nil, it)
			if err != nil {
				return nil, 0, err
			}
			out, ignored = append(out, got...), ignored+ign
		}
		return out, ignored, nil
	case "Deployment":
		var d appsv1.Deployment
		err = json.Unmarshal(js, &d)
		o.meta, o.workload = d.ObjectMeta, &workload{template: d.Spec.Template}
	case "StatefulSet":
		var d appsv1.StatefulSet
		err = json.Unmarshal(js, &d)
		o.meta, o.workload = d.ObjectMeta, &workload{template: d.Spec.Template}
	case "DaemonSet":
		var d appsv1.DaemonSet
		err = json.Unmarshal(js, &d)
		o.meta, o.workload = d.ObjectMeta, &workload{template: d.Spec.Template}
	case "Service":
		var s corev1.Service
		err = json.Unmarshal(js, &s)
		o.meta, o.service = s.ObjectMeta, &s
	case "Ingress":
		var in netv1.Ingress
		err = json.Unmarshal(js, &in)
		o.meta, o.ingress = in.ObjectMeta, &in
	case "TargetGroupBinding":
		var t struct {
			Meta metav1.ObjectMeta `json:"metadata"`
			targetGroupBinding
		}
		err = json.Unmarshal(js, &t)
		o.meta, o.tgb = t.Meta, &t.targetGroupBinding
	default:
		return nil, 1, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s:%d: %s: %w", file, line, tm.Kind, err)
	}
	if o.meta.Namespace == "" {
		o.meta.Namespace = "default"
	}
	return []object{o}, 0, nil
}

// at returns the Loc of path in o's document.
func (o *object) at(path string) nativecfg.Loc {
	if o.src == nil {
		return nativecfg.Loc{File: o.file, Path: o.kind + " " + o.meta.Name + " " + path}
	}
	return o.src.At(o.file, path)
}
