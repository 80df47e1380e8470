"""What a checkpoint is, counted exactly: the family and role tables, config.json's figures, the counts by
role, dtype, layer block and shard, the report, PEFT adapters, the tokenizer summary and the closed formula."""
