package main

import "os"

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}
