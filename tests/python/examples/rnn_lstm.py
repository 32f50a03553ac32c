# A many-to-one LSTM classifier: each image row is one time step.
import numpy as np
import torch
import torch.nn as nn

# Device configuration (the tutorial's line; retorch runs it on cuda without a GPU, see
# test_devices.py)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

sequence_length = 28
input_size = 28
hidden_size = 32
num_layers = 2
num_classes = 10
batch_size = 8
num_epochs = 2
learning_rate = 0.01

rng = np.random.RandomState(3)
images_all = rng.rand(16, 1, 28, 28).astype(np.float32)
labels_all = rng.randint(0, num_classes, size=16).astype(np.int64)


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
        out, _ = self.lstm(x, (h0, c0))
        out = self.fc(out[:, -1, :])
        return out


model = RNN(input_size, hidden_size, num_layers, num_classes).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

losses = []
for epoch in range(num_epochs):
    for i in range(0, len(images_all), batch_size):
        images = torch.from_numpy(images_all[i:i + batch_size]).reshape(-1, sequence_length,
                                                                         input_size).to(device)
        labels = torch.from_numpy(labels_all[i:i + batch_size]).to(device)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
