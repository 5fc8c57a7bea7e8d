scan --jobs 1 --by kind,server --format json samples/other-engines.log samples/lmdeploy.log samples/sglang-exception-group.log
