"""Distillation: verified experiences → NL-CoT-SQL tuples → a fine-tuned small student.

- :mod:`distill.sources`: which experiences teach (human, mined, synthetic), their stored CoT;
- :mod:`distill.prompts`: the chain's own SQL-gen prompt, the example held out of retrieval;
- :mod:`distill.dataset`, :mod:`distill.split`, :mod:`distill.curation`,
  :mod:`distill.manifest`: tuples, the split by database and SQL skeleton, the curation
  score, ``manifest.json``; :mod:`distill.dataset_files`: the folder's files as training
  reads them (without the store or the indices);
- :mod:`distill.config`, :mod:`distill.train`, :mod:`distill.checkpoints`,
  :mod:`distill.progress`: the training config, SFT with trl + peft, resume, progress;
- :mod:`distill.base_weights`: Hugging Face base weights dequantized from the packaged GGUF;
- :mod:`distill.export`: merge the adapter, write a GGUF llama.cpp loads;
- :mod:`distill.eval_inputs`: a run's exported GGUF and its base model, for the evaluation
  (:mod:`bench.distill_eval` benches the student against the base; bench sits above distill).

Heavy libraries (torch, transformers, trl, peft) load only when training or exporting.
"""
