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

// Command images builds container images without Docker: the engines'
// images from Debian's packages, the pause image and Steward's own image,
// as OCI image archives for `ctr -n k8s.io images import`, `docker load`
// or `kind load image-archive`.
//
//	go run ./hack/images -o bin/images [postgres mariadb redis memcached nginx pause steward]
//
// With no names it builds them all; steward needs the operator's static
// binary (make build). An image whose inputs did not change is not built
// again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/steward-dev/steward/internal/build/images"
)

func main() {
	out := flag.String("o", "bin/images", "directory of the archives; .deb files are cached in its debs directory")
	binary := flag.String("steward-binary", "bin/steward", "the operator's static binary, for the steward image")
	version := flag.String("version", "", "the steward image's tag (default: the Helm chart's appVersion)")
	name := flag.String("steward-image", "", "the steward image's full name (default: "+images.StewardName+":VERSION)")
	quiet := flag.Bool("q", false, "print only the summary")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./hack/images [flags] [%s]\n", strings.Join(images.Shorts("VERSION"), " "))
		flag.PrintDefaults()
	}
	flag.Parse()
	if *version == "" {
		v, err := images.ChartAppVersion("charts/steward/Chart.yaml")
		if err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		*version = v
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	opts := images.Options{Out: *out, StewardBinary: *binary, Version: *version, StewardImage: *name, ModuleDir: "."}
	if !*quiet {
		opts.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	start := time.Now()
	results, err := images.Build(ctx, opts, flag.Args())
	for _, r := range results {
		state := "up to date"
		if r.Built {
			state = "built"
		}
		fmt.Printf("%-17s %-48s %8.1f MB  %-10s %5.1fs\n", r.Definition.Short, r.Definition.Names[0],
			float64(r.Size)/1e6, state, r.Took.Seconds())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	fmt.Printf("%d images in %s in %.1fs\n", len(results), *out, time.Since(start).Seconds())
}
