module github.com/gpurent/gpurent

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	go.yaml.in/yaml/v3 v3.0.6
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
