module github.com/cairnrun/cairn/tools/jaeger

go 1.26
