package admission

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The hostile-input table (test/fixtures/hostile.go) through the real
// apiserver and mpiguard's webhooks: each case's objects are created in
// order; the first refusal must come from whom the table says (the
// apiserver's own validation, or mpiguard) and name the field. A case whose
// objects are all created was silently allowed: the spec fails.
var _ = Describe("hostile input through the apiserver", func() {
	for _, tc := range fixtures.HostileCases() {
		if tc.APIServer.By == fixtures.NotApplicable {
			continue
		}
		It(fmt.Sprintf("refuses %s (%s)", tc.Name, tc.APIServer.By), func(ctx context.Context) {
			ns := "hostile-" + rand.String(6)
			objs := hostileObjects(tc.Docs(ns, "hostile-"+ns))
			if len(objs) == 0 || objs[0].GetKind() != "Namespace" {
				objs = append([]*unstructured.Unstructured{{Object: map[string]any{
					"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
				}}}, objs...)
			}
			err := createAll(ctx, objs)
			Expect(err).To(HaveOccurred(), "%s: every object was created: silently allowed", tc.Name)
			msg := err.Error()
			if len(msg) > 2000 {
				msg = msg[:2000] + "…"
			}
			switch tc.APIServer.By {
			case fixtures.ByMpiguard:
				Expect(msg).To(MatchRegexp(`admission webhook "[a-z]+\.mpiguard\.io" denied the request`), "want mpiguard's refusal")
			case fixtures.ByAPIServer:
				Expect(msg).NotTo(ContainSubstring("admission webhook"), "want the apiserver's own validation, not a webhook")
			}
			for _, want := range tc.APIServer.Contains {
				Expect(msg).To(ContainSubstring(want))
			}
		})
	}
})

// hostileObjects decodes a case's YAML stream; a document that does not
// decode is a mistake in the table.
func hostileObjects(docs string) []*unstructured.Unstructured {
	GinkgoHelper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(docs)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		Expect(err).NotTo(HaveOccurred())
		js, err := yaml.YAMLToJSON(doc)
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		// utiljson keeps integers int64, as kubectl sends them.
		Expect(utiljson.Unmarshal(js, &u.Object)).To(Succeed())
		out = append(out, u)
	}
}

// createAll creates objs in order, each deleted after the spec, and returns
// the first error. ResourceQuotas get the status the quota controller would
// write (envtest runs none), once the apiserver accepts them.
func createAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	GinkgoHelper()
	for _, u := range objs {
		if u.GetKind() == "ResourceQuota" {
			q := &corev1.ResourceQuota{}
			Expect(runtimeConvert(u, q)).To(Succeed())
			if err := env.Client.Create(ctx, q.DeepCopy(), client.DryRunAll); err != nil {
				return err
			}
			createQuota(ctx, q, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
			continue
		}
		if err := env.Client.Create(ctx, u); err != nil {
			return err
		}
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, u))).To(Succeed())
		})
	}
	return nil
}

func runtimeConvert(u *unstructured.Unstructured, into any) error {
	js, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(js, into)
}
