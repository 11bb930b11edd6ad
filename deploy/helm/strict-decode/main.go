// strict-decode reads Kubernetes objects as multi-document YAML (what `helm template` prints) on
// stdin and decodes every one strictly into its Kubernetes API type: an unknown or misspelt field,
// a field given twice, a value of the wrong type or a kind the API does not have fails, naming the
// object and the field. The types are those of k8s.io/api (client-go's scheme) and the
// prometheus-operator's monitoring.coreos.com/v1 (ServiceMonitor).
//
//	helm template ... | strict-decode
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

var sourceComment = regexp.MustCompile(`(?m)^# Source: (.+)$`)

// blank reports whether a YAML document holds nothing but comments and whitespace.
func blank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}

func run(in io.Reader, out io.Writer) error {
	if err := monitoringv1.AddToScheme(scheme.Scheme); err != nil {
		return err
	}
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var failures []string
	objects := 0
	for index := 1; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", index, err)
		}
		if blank(doc) {
			continue
		}
		where := fmt.Sprintf("document %d", index)
		if m := sourceComment.FindSubmatch(doc); m != nil {
			where = string(bytes.TrimSpace(m[1]))
		}
		obj, gvk, err := strict.Decode(doc, nil, nil)
		name := describe(obj, gvk)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %s: %v", where, name, err))
			continue
		}
		objects++
		fmt.Fprintf(out, "ok %s (%s)\n", name, where)
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "\n"))
	}
	if objects == 0 {
		return errors.New("no Kubernetes object on stdin")
	}
	return nil
}

// describe names an object as Kind/name, as far as it was decoded.
func describe(obj runtime.Object, gvk *schema.GroupVersionKind) string {
	kind := "object"
	if gvk != nil && gvk.Kind != "" {
		kind = gvk.GroupVersion().String() + " " + gvk.Kind
	}
	if obj != nil {
		if accessor, err := meta.Accessor(obj); err == nil && accessor.GetName() != "" {
			return kind + "/" + accessor.GetName()
		}
	}
	return kind
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "strict-decode:", err)
		os.Exit(1)
	}
}
