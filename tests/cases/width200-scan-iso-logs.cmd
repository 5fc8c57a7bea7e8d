scan --jobs 1 --width 200 samples/other-engines.log samples/lmdeploy.log samples/sglang-exception-group.log
