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

package storetest

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sigV4 checks that each request is signed with AWS Signature Version 4 by
// the given key before passing it to next, and answers 403 with an S3 error
// otherwise. It recomputes the signature with the SDK's signer over the
// headers the request says it signed, and compares. Presigned URLs are not
// supported.
func sigV4(accessKeyID, secret, region string, next http.Handler) http.Handler {
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: accessKeyID, SecretAccessKey: secret}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, msg := verify(signer, creds, region, r); code != "" {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// verify returns an S3 error code and message when r is not signed by
// creds, or empty strings.
func verify(signer *v4.Signer, creds aws.Credentials, region string, r *http.Request) (code, msg string) {
	auth := r.Header.Get("Authorization")
	fields, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "AccessDenied", "The request is not signed with AWS Signature Version 4."
	}
	parts := map[string]string{}
	for _, f := range strings.Split(fields, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		parts[k] = v
	}
	scope := strings.Split(parts["Credential"], "/")
	if len(scope) != 5 || scope[0] != creds.AccessKeyID {
		return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "AccessDenied", "The request has no valid X-Amz-Date."
	}
	req, err := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), http.NoBody)
	if err != nil {
		return "AccessDenied", "The request's URL does not parse."
	}
	for _, h := range strings.Split(parts["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			req.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if err := signer.SignHTTP(context.Background(), creds, req, payload, scope[3], region, when); err != nil {
		return "AccessDenied", "The request cannot be signed again."
	}
	want := signature(req.Header.Get("Authorization"))
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(parts["Signature"])) != 1 {
		return "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."
	}
	return "", ""
}

func signature(auth string) string {
	_, sig, _ := strings.Cut(auth, "Signature=")
	return sig
}
