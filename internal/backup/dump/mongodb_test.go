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

package dump

import "testing"

// TestMongoDB documents that the mongodb path (mongodump --archive --gzip,
// mongorestore --archive --gzip) is not verified: it needs MongoDB's server
// and tools, which the test machines do not have, and a MongoDB driver to
// fill and compare a database, which the module does not require. It skips
// even when STEWARD_REQUIRE_SERVERS=1: Debian has no MongoDB packages.
func TestMongoDB(t *testing.T) {
	t.Skip("the MongoDB path (mongodump/mongorestore) is not verified: no MongoDB server, tools or driver here")
}
