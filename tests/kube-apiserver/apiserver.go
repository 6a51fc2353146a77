package main

import (
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version" // for version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// runAPIServer is Kubernetes' cmd/kube-apiserver main: the same command, flags and registrations.
func runAPIServer(args []string) int {
	command := app.NewAPIServerCommand()
	command.SetArgs(args)
	return cli.Run(command)
}
