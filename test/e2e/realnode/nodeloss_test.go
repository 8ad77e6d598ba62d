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

package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The disruptions of a whole node, as the report names them.
const (
	kindNodeLoss   = "node-loss"
	kindNetworkCut = "network-cut"
)

// nodePlacement is where the node disruptions happen: lone is the node
// that holds one instance of the Database alone, pod, which is made the
// primary before each; other holds the other instances, the client and
// the operator's leader. So the node lost takes no replica with it, and
// no acknowledged write (every one is on some replica of other) is lost.
type nodePlacement struct {
	lone, other *localcluster.Node
	pod         string
}

// placeForNodeLoss finds the node that holds one instance alone.
func placeForNodeLoss(t *testing.T) nodePlacement {
	t.Helper()
	byNode := map[string][]string{}
	for _, pod := range failoverPods() {
		node := jsonpath(t, "pod/"+pod, "{.spec.nodeName}")
		byNode[node] = append(byNode[node], pod)
	}
	nodes := cluster.Nodes()
	if len(nodes) != 2 {
		t.Fatalf("the node disruptions need two real nodes, the cluster has %d", len(nodes))
	}
	for i, n := range nodes {
		if pods := byNode[n.Name]; len(pods) == 1 {
			p := nodePlacement{lone: n, other: nodes[1-i], pod: pods[0]}
			t.Logf("node disruptions: %s holds %s alone; %s holds %v", n.Name, p.pod, p.other.Name, byNode[p.other.Name])
			return p
		}
	}
	t.Fatalf("no node holds exactly one instance: %v", byNode)
	return nodePlacement{}
}

// nodeDisruptions are the loss of the node under the primary (every
// process on it killed, as by a power failure, then the node started
// again) and a network cut of that node (its processes run on, cut off,
// then the link is healed), each done once.
func nodeDisruptions(p nodePlacement, probe *writeProbe, watch *primaryWatch) []disruption {
	return []disruption{
		{kind: kindNodeLoss, rounds: 1, timeout: 6 * time.Minute, prepare: p.prepare(probe),
			do: func(t *testing.T, old string) {
				if err := p.lone.Kill(); err != nil {
					t.Fatalf("killing node %s: %v", p.lone.Name, err)
				}
				restarted := false
				t.Cleanup(func() {
					if !restarted {
						_ = p.lone.Restart(context.WithoutCancel(t.Context()))
					}
				})
				waitTakenOver(t, old, probe, "the loss of node "+p.lone.Name)
				if err := p.lone.Restart(t.Context()); err != nil {
					t.Fatalf("restarting node %s: %v", p.lone.Name, err)
				}
				restarted = true
			}},
		{kind: kindNetworkCut, rounds: 1, timeout: 6 * time.Minute, prepare: p.prepare(probe),
			do: func(t *testing.T, old string) { cutOff(t, p, old, probe, watch) }},
	}
}

// prepare makes the instance alone on its node the primary and moves the
// operator's leader off that node, so that the disruption strikes a
// primary and nothing else of the Database, and not the operator.
func (p nodePlacement) prepare(probe *writeProbe) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		moveLeaderOff(t, p.lone.Name)
		before := getHA(t).Status
		old := before.Primary
		if old == p.pod {
			return
		}
		kubectl(t, "annotate", "database/"+ha.db, switchoverAnnotation+"="+p.pod, "--overwrite")
		eventually(t, 3*time.Minute, "a switchover to "+p.pod+" before the node disruption", func() error {
			db := getHA(t)
			if err := failedOver(t, db, old, before.Term); err != nil {
				return err
			}
			if db.Status.Primary != p.pod {
				return fmt.Errorf("status.primary is %s", db.Status.Primary)
			}
			if _, ok := db.Metadata.Annotations[switchoverAnnotation]; ok {
				return fmt.Errorf("the annotation %s is still there", switchoverAnnotation)
			}
			return nil
		})
		probe.waitFlowing(t, "the switchover to "+p.pod)
	}
}

// moveLeaderOff deletes the operator's leader pod while it runs on node,
// until a replica on another node leads.
func moveLeaderOff(t *testing.T, node string) {
	t.Helper()
	deleted := map[string]bool{}
	eventually(t, 3*time.Minute, "the operator's leader on a node other than "+node, func() error {
		holder, err := devenv.Kubectl(t.Context(), cluster, nil, "get", "--namespace="+devenv.OperatorNamespace,
			"lease/steward.steward.dev", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return fmt.Errorf("reading the leader election lease: %w", err)
		}
		pod, _, _ := strings.Cut(holder, "_")
		if pod == "" {
			return errors.New("no leader yet")
		}
		// The holder may have changed since: its pod is read, not
		// required to exist.
		on, err := devenv.Kubectl(t.Context(), cluster, nil, "get", "--namespace="+devenv.OperatorNamespace,
			"pod/"+pod, "-o", "jsonpath={.spec.nodeName}")
		if err != nil {
			return fmt.Errorf("the leader's pod %s: %w", pod, err)
		}
		if strings.TrimSpace(on) != node {
			return nil
		}
		if !deleted[pod] {
			kubectl(t, "delete", "pod", "--namespace="+devenv.OperatorNamespace, pod, "--wait=false")
			deleted[pod] = true
		}
		return fmt.Errorf("the leader %s runs on %s", pod, node)
	})
}

// waitTakenOver waits until another instance than old is the primary and
// the probe's writes flow again.
func waitTakenOver(t *testing.T, old string, probe *writeProbe, after string) {
	t.Helper()
	eventually(t, 3*time.Minute, "a primary in place of "+old+" after "+after, func() error {
		if p := getHA(t).Status.Primary; p == "" || p == old {
			return fmt.Errorf("status.primary is %q", p)
		}
		return nil
	})
	probe.waitFlowing(t, after)
}

// cutOff cuts the primary's node off the network. While it is cut off, the
// test asks the old primary from inside that node whether it takes writes:
// it must stop, by fencing itself, before another instance takes writes.
// Once another instance is the primary and the old one has stopped, the
// link is healed, and the round's wait sees the old primary rejoin.
func cutOff(t *testing.T, p nodePlacement, old string, probe *writeProbe, watch *primaryWatch) {
	t.Helper()
	ip := jsonpath(t, "pod/"+old, "{.status.podIP}")
	creds := credentials(t)
	asker := &cutOffAsker{pod: old, node: p.lone, ip: ip, creds: creds, seen: watch}
	if span := asker.ask(t.Context()); span == nil {
		t.Fatalf("asking %s at %s from inside node %s before the cut: no answer that it is a primary (%s)", old, ip, p.lone.Name, asker.lastErr)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := asker.watch(ctx)
	if err := p.lone.Disconnect(t.Context()); err != nil {
		stop()
		t.Fatalf("cutting node %s off: %v", p.lone.Name, err)
	}
	cut := time.Now().UnixMilli()
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = p.lone.Reconnect(context.WithoutCancel(t.Context()))
		}
	})
	waitTakenOver(t, old, probe, "the network cut of node "+p.lone.Name)
	eventually(t, 2*time.Minute, "the cut-off primary "+old+" no longer taking writes", func() error {
		last, answered := asker.lastWritable()
		if since := time.Now().UnixMilli() - last; since < 3000 {
			return fmt.Errorf("it took writes %d ms ago (%d answers)", since, answered)
		}
		return nil
	})
	stop()
	<-done
	if err := p.lone.Reconnect(t.Context()); err != nil {
		t.Fatalf("reconnecting node %s: %v", p.lone.Name, err)
	}
	healed = true

	last, answered := asker.lastWritable()
	newPrimary := getHA(t).Status.Primary
	first, ok := watch.firstWritable(newPrimary, cut)
	switch {
	case last < cut:
		t.Errorf("network cut: the old primary %s was never seen taking writes after the cut (%d answers, last error %s): the check saw nothing",
			old, answered, asker.lastErr)
	case !ok:
		t.Errorf("network cut: the new primary %s was never seen taking writes after the cut", newPrimary)
	case last >= first:
		t.Errorf("network cut: two writable primaries: the cut-off %s took writes until %s, %s from %s",
			old, clock(last), newPrimary, clock(first))
	default:
		t.Logf("network cut: the cut-off %s took writes until %v after the cut (it fenced itself); %s took writes %v after the cut",
			old, time.Duration(last-cut)*time.Millisecond, newPrimary, time.Duration(first-cut)*time.Millisecond)
	}
}

// dbCredentials are the application's credentials from the Database's
// Secret.
type dbCredentials struct {
	username, password, database, port string
}

// credentials reads the Database's credentials Secret.
func credentials(t *testing.T) dbCredentials {
	t.Helper()
	var secret struct {
		Data map[string][]byte `json:"data"`
	}
	getJSON(t, &secret, "secret", ha.db+"-credentials")
	return dbCredentials{username: string(secret.Data["username"]), password: string(secret.Data["password"]),
		database: string(secret.Data["database"]), port: string(secret.Data["port"])}
}

// cutOffAsker asks an instance on a node that is cut off, from inside the
// node's network namespace with the host's client program, whether it
// takes writes. The spans it sees go to the watch for two primaries too.
type cutOffAsker struct {
	pod   string
	node  *localcluster.Node
	ip    string
	creds dbCredentials
	seen  *primaryWatch

	mu sync.Mutex
	// last is the end of the last span over which the instance took
	// writes, in Unix milliseconds of its clock; answered counts answers.
	last     int64
	answered int
	lastErr  string
}

// watch asks every 250 ms until ctx ends; the channel is closed then.
func (a *cutOffAsker) watch(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			a.ask(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return done
}

// ask asks once and records the answer.
func (a *cutOffAsker) ask(ctx context.Context) *primarySpan {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var cmd []string
	env := os.Environ()
	switch ha.engine {
	case "postgres":
		cmd = []string{"psql", fmt.Sprintf("host=%s port=%s user=%s dbname=%s connect_timeout=1", a.ip, a.creds.port, a.creds.username, a.creds.database),
			"-X", "-qAt", "-v", "ON_ERROR_STOP=1"}
		env = append(env, "PGPASSWORD="+a.creds.password)
	default:
		cmd = []string{"mariadb", "-h", a.ip, "-P", a.creds.port, "-u", a.creds.username, "--connect-timeout=1", "-N", "-B", a.creds.database}
		env = append(env, "MYSQL_PWD="+a.creds.password)
	}
	c := a.node.Command(ctx, cmd[0], cmd[1:]...)
	c.Env = env
	c.Stdin = strings.NewReader(ha.spanSQL)
	out, err := c.CombinedOutput()
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.lastErr = fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out)))
		return nil
	}
	a.answered++
	span := parseSpan(a.pod, string(out))
	if span != nil {
		a.last = max(a.last, span.to)
		a.seen.record(span)
	}
	return span
}

// lastWritable returns the end of the last span over which the instance
// took writes and how many times it answered.
func (a *cutOffAsker) lastWritable() (int64, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last, a.answered
}
