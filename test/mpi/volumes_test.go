package mpi

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// mount is a materialised volume and where the container mounts it.
type mount struct{ src, dst string }

// volumes writes the Secret and ConfigMap volumes the container mounts from
// the objects the Trainer rendered, with the kubelet's file modes and fsGroup
// ownership (group fsGroup, group-readable, as SetVolumeOwnership does).
func (k *kubelet) volumes(p *pod, c corev1.Container, dir string, fsGroup *int64) ([]mount, error) {
	byName := map[string]corev1.Volume{}
	for _, v := range p.spec.Volumes {
		byName[v.Name] = v
	}
	var mounts []mount
	for _, vm := range c.VolumeMounts {
		v, ok := byName[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s names no volume", vm.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" {
			return nil, fmt.Errorf("volume mount %s uses subPath, which the test does not reproduce", vm.Name)
		}
		var data map[string][]byte
		var items []corev1.KeyToPath
		var defaultMode int32
		switch {
		case v.Secret != nil:
			s, ok := k.r.secrets[v.Secret.SecretName]
			if !ok {
				return nil, fmt.Errorf("secret %q of volume %s was not rendered (the pod would not start)", v.Secret.SecretName, v.Name)
			}
			data, items, defaultMode = s, v.Secret.Items, ptr.Deref(v.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
		case v.ConfigMap != nil:
			cm, ok := k.r.configMaps[v.ConfigMap.Name]
			if !ok {
				return nil, fmt.Errorf("configMap %q of volume %s was not rendered (the pod would not start)", v.ConfigMap.Name, v.Name)
			}
			data = map[string][]byte{}
			for key, val := range cm {
				data[key] = []byte(val)
			}
			items, defaultMode = v.ConfigMap.Items, ptr.Deref(v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
		default:
			return nil, fmt.Errorf("volume %s is neither a Secret nor a ConfigMap, which the test does not reproduce", v.Name)
		}
		if len(items) == 0 {
			keys := make([]string, 0, len(data))
			for key := range data {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			for _, key := range keys {
				items = append(items, corev1.KeyToPath{Key: key, Path: key})
			}
		}
		src := filepath.Join(dir, "volumes", v.Name)
		must(k.t, os.MkdirAll(src, 0o755))
		for _, it := range items {
			val, ok := data[it.Key]
			if !ok {
				return nil, fmt.Errorf("volume %s: key %q is not in the rendered object", v.Name, it.Key)
			}
			mode := os.FileMode(ptr.Deref(it.Mode, defaultMode))
			f := filepath.Join(src, it.Path)
			must(k.t, os.MkdirAll(filepath.Dir(f), 0o755))
			must(k.t, os.WriteFile(f, val, mode))
			if fsGroup != nil {
				must(k.t, os.Chown(f, 0, int(*fsGroup)))
				mode |= 0o440
			}
			// WriteFile's mode passes through the umask; the kubelet's does not.
			must(k.t, os.Chmod(f, mode))
		}
		if fsGroup != nil {
			must(k.t, os.Chown(src, 0, int(*fsGroup)))
			must(k.t, os.Chmod(src, 0o755|os.ModeSetgid))
		}
		mounts = append(mounts, mount{src: src, dst: vm.MountPath})
	}
	return mounts, nil
}
