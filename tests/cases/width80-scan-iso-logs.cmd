scan --jobs 1 --width 80 samples/other-engines.log samples/lmdeploy.log samples/sglang-exception-group.log
