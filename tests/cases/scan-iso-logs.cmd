scan --jobs 1 samples/other-engines.log samples/lmdeploy.log samples/sglang-exception-group.log
