package resourcequota_test

import corev1 "k8s.io/api/core/v1"

// podResource is the group resource of pods.
var podResource = corev1.Resource("pods")
