// Package chaos is a randomized fault run of three zkgroup daemons with
// judges (see bench/README.md, "chaos"). It is all test code: run it with
// go test and -duration; without it the run skips.
package chaos
