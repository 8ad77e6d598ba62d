/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/internal/labels"
)

// The operator is found the way it runs from its Helm chart or
// config/manager: replicas elect a leader through the Lease
// steward.steward.dev (--leader-election-id) in their own namespace, and
// their pods carry app.kubernetes.io/name=steward and
// app.kubernetes.io/component=manager.
const (
	defaultOperatorLease = "steward.steward.dev"
	operatorName         = "steward"
	operatorComponent    = "manager"
	// leaseSlack is how much later than its duration a Lease may be
	// renewed and still count as held: clocks differ.
	leaseSlack = 5 * time.Second
)

// operatorFlags say where the operator is.
type operatorFlags struct {
	namespace string
	lease     string
	skip      bool
}

func (o *operatorFlags) addFlags(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&o.namespace, "operator-namespace", "", "Namespace of the Steward operator (default: look in every namespace)")
	fs.StringVar(&o.lease, "operator-lease", defaultOperatorLease, "Name of the operator's leader election Lease")
	fs.BoolVar(&o.skip, "skip-operator-check", false, "Do not check that the operator runs before waiting for it (e.g. an operator run with --leader-elect=false outside the cluster)")
}

// errOperatorNotRunning is what commands that wait for the operator
// return when it does not run.
var errOperatorNotRunning = errors.New("the Steward operator is not running")

// checkOperator returns an error wrapping errOperatorNotRunning when no
// operator runs: no replica holds its Lease and no pod of it is ready. A
// check that the user may not make (no right to read Leases or pods there)
// is a warning, not an error: the operator may well run.
func (c *cli) checkOperator(ctx context.Context) error {
	if c.operator.skip {
		return nil
	}
	held, leaseWhy, leaseErr := c.operatorLease(ctx)
	if leaseErr == nil && held {
		return nil
	}
	ready, podWhy, podErr := c.operatorPods(ctx)
	if podErr == nil && ready {
		// Leader election off (a single replica), or between leaders.
		return nil
	}
	if leaseErr != nil && podErr != nil {
		fmt.Fprintf(c.streams.ErrOut, "Warning: cannot tell whether the Steward operator runs: %v; %v\n", leaseErr, podErr)
		return nil
	}
	var why []string
	for _, w := range []string{leaseWhy, podWhy} {
		if w != "" {
			why = append(why, w)
		}
	}
	return fmt.Errorf("%w: %s (start it, or pass --operator-namespace or --skip-operator-check if it runs elsewhere)",
		errOperatorNotRunning, strings.Join(why, "; "))
}

// operatorLease reports whether a replica holds the operator's Lease, or
// why not.
func (c *cli) operatorLease(ctx context.Context) (held bool, why string, err error) {
	leases := &coordinationv1.LeaseList{}
	opts := []client.ListOption{client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", c.operator.lease)}}
	where := "in any namespace"
	if c.operator.namespace != "" {
		opts = append(opts, client.InNamespace(c.operator.namespace))
		where = fmt.Sprintf("in namespace %q", c.operator.namespace)
	}
	if err := c.c.List(ctx, leases, opts...); err != nil {
		return false, "", apiError(err, "list", schemaLeases, "lease", c.operator.namespace, "")
	}
	if len(leases.Items) == 0 {
		return false, fmt.Sprintf("no Lease %s %s", c.operator.lease, where), nil
	}
	var last string
	for _, l := range leases.Items {
		holder, renewed := "", time.Time{}
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if l.Spec.RenewTime != nil {
			renewed = l.Spec.RenewTime.Time
		}
		valid := 15 * time.Second
		if l.Spec.LeaseDurationSeconds != nil {
			valid = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		if holder != "" && c.now().Sub(renewed) <= valid+leaseSlack {
			return true, "", nil
		}
		switch {
		case holder == "":
			last = fmt.Sprintf("nobody holds the Lease %s/%s", l.Namespace, l.Name)
		case renewed.IsZero():
			last = fmt.Sprintf("the Lease %s/%s held by %s was never renewed", l.Namespace, l.Name, holder)
		default:
			last = fmt.Sprintf("the Lease %s/%s was last renewed %s ago, by %s", l.Namespace, l.Name,
				duration.HumanDuration(c.now().Sub(renewed)), holder)
		}
	}
	return false, last, nil
}

var schemaLeases = coordinationv1.SchemeGroupVersion.WithResource("leases").GroupResource()

// operatorPods reports whether a pod of the operator is ready, or why not.
func (c *cli) operatorPods(ctx context.Context) (ready bool, why string, err error) {
	pods := &corev1.PodList{}
	opts := []client.ListOption{client.MatchingLabels{labels.Name: operatorName, labels.Component: operatorComponent}}
	where := "in any namespace"
	if c.operator.namespace != "" {
		opts = append(opts, client.InNamespace(c.operator.namespace))
		where = fmt.Sprintf("in namespace %q", c.operator.namespace)
	}
	if err := c.c.List(ctx, pods, opts...); err != nil {
		return false, "", apiError(err, "list", core("pods"), "pod", c.operator.namespace, "")
	}
	for _, p := range pods.Items {
		if podReady(&p) {
			return true, "", nil
		}
	}
	if len(pods.Items) == 0 {
		return false, fmt.Sprintf("no pod labelled %s=%s,%s=%s %s", labels.Name, operatorName, labels.Component, operatorComponent, where), nil
	}
	return false, fmt.Sprintf("none of its %d pods is ready", len(pods.Items)), nil
}

// podReady reports whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
