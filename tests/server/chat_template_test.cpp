#include "server/chat_template.h"

#include <gtest/gtest.h>

namespace tps {

static const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

TEST(ChatTemplate, RecognisesFamiliesFromJinjaSource) {
  EXPECT_EQ(detect_chat_family("{% for m in messages %}<|im_start|>{{ m.role }}"), ChatFamily::kChatml);
  EXPECT_EQ(detect_chat_family("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}"),
            ChatFamily::kLlama3);
  EXPECT_EQ(detect_chat_family("{{ '<start_of_turn>' + role + '\\n' }}"), ChatFamily::kGemma);
  EXPECT_EQ(detect_chat_family("{{'<|user|>' + '\\n' + message['content'] + '<|end|>'}}"), ChatFamily::kPhi3);
  EXPECT_EQ(detect_chat_family("{{ bos_token + '[INST] ' + '<<SYS>>\\n' }}"), ChatFamily::kLlama2);
  EXPECT_EQ(detect_chat_family("{{ bos_token }}{% if %}{{ '[INST] ' + content + ' [/INST]' }}"), ChatFamily::kMistral);
  EXPECT_EQ(detect_chat_family(""), ChatFamily::kChatml);
}

TEST(ChatTemplate, NamesRoundTrip) {
  for (auto f : {ChatFamily::kChatml, ChatFamily::kLlama2, ChatFamily::kLlama3, ChatFamily::kMistral,
                 ChatFamily::kPhi3, ChatFamily::kGemma})
    EXPECT_EQ(chat_family_from_name(chat_family_name(f)), f);
  EXPECT_EQ(chat_family_from_name("llama-3"), ChatFamily::kLlama3);
  EXPECT_EQ(chat_family_from_name("Qwen"), ChatFamily::kChatml);
  EXPECT_FALSE(chat_family_from_name("jinja"));
}

// Known renderings of the reference Jinja templates (HF tokenizer_config.json), with the
// leading BOS left to the tokenizer.
TEST(ChatTemplate, Chatml) {
  EXPECT_EQ(render_chat(ChatFamily::kChatml, kConversation),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama3) {
  EXPECT_EQ(render_chat(ChatFamily::kLlama3, kConversation),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Llama2) {
  EXPECT_EQ(render_chat(ChatFamily::kLlama2, kConversation),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Bye [/INST]");
}

TEST(ChatTemplate, Mistral) {
  EXPECT_EQ(render_chat(ChatFamily::kMistral, kConversation),
            "[INST] Be brief.\n\nHi [/INST]Hello.</s>[INST] Bye [/INST]");
}

TEST(ChatTemplate, Phi3) {
  EXPECT_EQ(render_chat(ChatFamily::kPhi3, {{"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}}),
            "<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n");
}

TEST(ChatTemplate, Gemma) {
  EXPECT_EQ(render_chat(ChatFamily::kGemma, kConversation),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
}

}  // namespace tps
