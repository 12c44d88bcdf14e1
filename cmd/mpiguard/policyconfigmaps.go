//go:build !checkonly

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/reload"
)

func init() { registerPolicySubcommand(newPolicyConfigMapsCommand) }

func newPolicyConfigMapsCommand() *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:   "configmaps DIR",
		Short: "Print the ConfigMaps that install a policies folder at run time",
		Long: `configmaps prints, as YAML for kubectl apply, the ConfigMaps that make a running
mpiguard serve the policies of DIR (the folder policy test and check --policies
read), named and labelled as mpiguard's policy reload reads them:

  - one ConfigMap per policy folder, named mpiguard-policy-<folder>, labelled
    mpiguard.io/policy=rego: every .rego file but the _test.rego ones, and
    the folder's parameters.schema.yaml as <folder>.parameters.schema.yaml;
  - DIR/parameters.yaml, if any, as the ConfigMap mpiguard-policy-parameters,
    labelled mpiguard.io/policy=parameters, under the key parameters.yaml.

Samples and tests stay out: they are for policy test. The policies are loaded
first, as policy test loads them, so a folder that does not compile prints
nothing and exits 2.`,
		Example: `  mpiguard policy test ./my-policies && mpiguard policy configmaps ./my-policies | kubectl apply -f -`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyConfigMaps(args[0], namespace, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "mpiguard-system", "namespace mpiguard runs in (where it reads its policy ConfigMaps)")
	return cmd
}

// runPolicyConfigMaps prints the ConfigMaps of the policies folder dir.
func runPolicyConfigMaps(dir, namespace string, out io.Writer) error {
	// The folder must load as it will at run time: laid over the embedded set.
	if _, err := policySetFromFlags(dir, ""); err != nil {
		return &exitError{2, err}
	}
	cms, err := policyConfigMaps(dir, namespace)
	if err != nil {
		return &exitError{2, err}
	}
	if len(cms) == 0 {
		return &exitError{2, fmt.Errorf("%s holds no policy folder (<policy>/*.rego) and no parameters.yaml", dir)}
	}
	for i, cm := range cms {
		b, err := yaml.Marshal(cm)
		if err != nil {
			return &exitError{2, err}
		}
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// policyConfigMaps builds the ConfigMaps of dir, in the order of their names.
func policyConfigMaps(dir, namespace string) ([]*corev1.ConfigMap, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var cms []*corev1.ConfigMap
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data := map[string]string{}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			name := f.Name()
			key := ""
			switch {
			case f.IsDir(), strings.HasSuffix(name, "_test.rego"):
			case strings.HasSuffix(name, ".rego"):
				key = name
			case name == engine.SchemaFile:
				key = e.Name() + reload.SchemaKeySuffix
			}
			if key == "" {
				continue
			}
			src, err := os.ReadFile(filepath.Join(dir, e.Name(), name))
			if err != nil {
				return nil, err
			}
			data[key] = string(src)
		}
		if !hasRego(data) {
			continue // samples only, or not a policy folder
		}
		cms = append(cms, configMap("mpiguard-policy-"+e.Name(), namespace, reload.KindRego, data))
	}
	params, err := os.ReadFile(filepath.Join(dir, reload.ParametersKey))
	switch {
	case err == nil:
		cms = append(cms, configMap("mpiguard-policy-parameters", namespace, reload.KindParameters, map[string]string{reload.ParametersKey: string(params)}))
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	sort.Slice(cms, func(i, j int) bool { return cms[i].Name < cms[j].Name })
	return cms, nil
}

func hasRego(data map[string]string) bool {
	for k := range data {
		if strings.HasSuffix(k, ".rego") {
			return true
		}
	}
	return false
}

func configMap(name, namespace, kind string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{reload.LabelPolicy: kind}},
		Data:       data,
	}
}
