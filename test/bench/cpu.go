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

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: 100 per second
// on every architecture Linux and Go share.
const userHZ = 100

// cpuTimes are CPU seconds (user and system) by process name.
type cpuTimes map[string]float64

// processCPU reads the CPU time each process of pids has used since it
// started. A process that has exited is left out.
func processCPU(pids map[string]int) cpuTimes {
	out := cpuTimes{}
	for name, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses and may
		// hold spaces: utime and stime are the 12th and 13th of them.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 > len(stat) {
			continue
		}
		f := strings.Fields(string(stat[i+2:]))
		if len(f) < 13 {
			continue
		}
		user, err1 := strconv.ParseFloat(f[11], 64)
		sys, err2 := strconv.ParseFloat(f[12], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[name] = (user + sys) / userHZ
	}
	return out
}

// since is the CPU time used after before.
func (c cpuTimes) since(before cpuTimes) cpuTimes {
	d := cpuTimes{}
	for k, v := range c {
		d[k] = v - before[k]
	}
	return d
}

// total sums every process's CPU time.
func (c cpuTimes) total() float64 {
	var t float64
	for _, v := range c {
		t += v
	}
	return t
}

// medianCPU is, for each process, the median of its CPU seconds over rounds.
func medianCPU(rounds []cpuTimes) cpuTimes {
	names := map[string]bool{}
	for _, r := range rounds {
		for k := range r {
			names[k] = true
		}
	}
	out := cpuTimes{}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		var vs []float64
		for _, r := range rounds {
			vs = append(vs, r[k])
		}
		out[k] = percentile(vs, 50)
	}
	return out
}

// profileRound starts saving, beside the results, a 30-second CPU profile of
// the API server (apiserver-<name>.pprof) and one of op (<name>-cpu.pprof,
// when op is not nil), from 10 s into the first round (r 0) of a bulk
// create: with the CPU time split by process, they say what each process
// spent it on. wait returns once both are saved; in other rounds, and
// without -profiles, nothing is taken.
func (b *bench) profileRound(ctx context.Context, r int, name string, op metricsReader) (wait func() error) {
	if !b.cfg.Profiles || r != 0 {
		return func() error { return nil }
	}
	dir := filepath.Dir(b.cfg.Out)
	errs := make(chan error, 2)
	take := func(url string, hc *http.Client, file string) {
		select {
		case <-ctx.Done():
			errs <- ctx.Err()
			return
		case <-time.After(10 * time.Second):
		}
		errs <- saveProfile(ctx, hc, url+"/profile?seconds=30", filepath.Join(dir, file))
	}
	n := 1
	hc, err := rest.HTTPClientFor(b.rest)
	if err != nil {
		return func() error { return err }
	}
	go take(b.rest.Host+"/debug/pprof", hc, "apiserver-"+name+".pprof")
	if op != nil {
		n++
		go take(op.Profiles(), http.DefaultClient, name+"-cpu.pprof")
	}
	return func() error {
		var all []error
		for range n {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	}
}

// saveProfile writes what url answers to path.
func saveProfile(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("profiling: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling: %s answered %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("profiling: %w", err)
	}
	return os.WriteFile(path, body, 0o644)
}
