"""The four special token ids every tokenizer and model shares.

<pad> fills short rows of a batch; <unk> stands for a piece the vocabulary lacks; the decoder
starts from <sos> and a sentence ends with <eos>.
"""

PAD_ID, UNK_ID, SOS_ID, EOS_ID = 0, 1, 2, 3
PAD_PIECE, UNK_PIECE, SOS_PIECE, EOS_PIECE = "<pad>", "<unk>", "<sos>", "<eos>"
